/** Terminal output without its colour codes, as a person reads it. */
export const plain = (text: string): string => text.replace(/\x1b\[\d+m/g, "")
