/** The document's tag of every image operation. */
export const tags = ["Images"];
