// The publishing operations: one ad, several or all of a user's, and a dry run of either.
import { createRouter } from "../openapi";
import { publishManyRouter } from "./batch";
import { publishPreflightRouter } from "./preflight";
import { publishOneRouter } from "./single";

export const publishRouter = createRouter()
  .route("/", publishPreflightRouter)
  .route("/", publishOneRouter)
  .route("/", publishManyRouter);
