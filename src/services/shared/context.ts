import type { Db } from "../../db/client";
import type { Env } from "../../env";
import type { Scope } from "./access";

/** What a domain operation runs with: the database, the bindings, the caller and the request it serves. */
export interface ServiceContext {
  db: Db;
  env: Env;
  scope: Scope;
  /** The request id, carried into queue messages so their log lines can be tied to the request. */
  requestId?: string;
}
