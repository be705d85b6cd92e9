// zod/v4/core/to-json-schema.js in the Worker bundle (see unavailable.js). Schemas create their
// `toJSONSchema` methods when built, so the factories answer a method that throws when called.
import { unavailable } from "./unavailable.js";
export const createStandardJSONSchemaMethod = () => unavailable;
export const createToJSONSchemaMethod = () => unavailable;
export const extractDefs = unavailable;
export const finalize = unavailable;
export const handleUnrepresentable = unavailable;
export const initializeContext = unavailable;
export const process = unavailable;
export const processSchema = unavailable;
