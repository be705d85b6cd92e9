// zod/v4/core/compile.js in the Worker bundle (see unavailable.js): its compiler builds code with
// `new Function`, which Workers refuse anyway.
import { unavailable } from "./unavailable.js";
export const INVALID = Symbol.for("zod.compile.invalid");
export class ZodCompileAsyncError extends Error {}
export class ZodCompileUnsupportedError extends Error {}
export const compile = unavailable;
export const compileFn = unavailable;
export const withParser = unavailable;
