// The publishing operations: one ad, and several or all of a user's.
import { createRouter } from "../openapi";
import { publishManyRouter } from "./batch";
import { publishOneRouter } from "./single";

export const publishRouter = createRouter().route("/", publishOneRouter).route("/", publishManyRouter);
