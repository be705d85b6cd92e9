import type { Db } from "../../db/client";
import type { Env } from "../../env";
import type { Caller } from "./access";

/** What a domain operation runs with: the database, the bindings, the caller and the request it serves. */
export interface ServiceContext {
  db: Db;
  env: Env;
  caller: Caller;
  /** Public base of image URLs for this work (lib/media.ts mediaBaseOf). */
  mediaBase: string;
  /** The request id, carried into queue messages so their log lines can be tied to the request. */
  requestId?: string;
}
