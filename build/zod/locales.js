// zod/v4/locales/index.js in the Worker bundle (see unavailable.js): the one fallback locale, en.js.
export { default as en } from "./en.js";
