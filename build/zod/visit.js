// zod/v4/core/visit.js in the Worker bundle (see unavailable.js): the schema traversal behind
// `.deepPartial()`, which no schema here uses.
import { unavailable } from "./unavailable.js";

export const visit = unavailable;
