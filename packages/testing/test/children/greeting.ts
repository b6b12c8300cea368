/** A module the bundled child imports. */
export const greeting = (name: string): string => `hello, ${name}`
