/** The Drizzle tables, one file per domain; drizzle-kit reads them all through this index. */
export * from "./accounts";
export * from "./ads";
export * from "./catalogue";
export * from "./directory";
export * from "./events";
export * from "./feeds";
export * from "./images";
export * from "./market";
export * from "./operations";
export * from "./publishing";
export * from "./scheduling";
export * from "./syncs";
export * from "./wallet";
