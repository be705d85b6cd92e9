// zod/v4/locales/index.js in the Worker bundle (see unavailable.js): English only, zod's default.
export { default as en } from "../../node_modules/zod/v4/locales/en.js";
