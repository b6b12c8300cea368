const colour = new RegExp(`${String.fromCharCode(27)}\\[\\d+m`, "g")

/** Terminal output without its colour codes, as a person reads it. */
export const plain = (text: string): string => text.replace(colour, "")
