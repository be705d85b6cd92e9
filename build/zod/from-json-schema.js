// zod/v4/classic/from-json-schema.js in the Worker bundle (see unavailable.js).
export { unavailable as fromJSONSchema } from "./unavailable.js";
