export { callerOf } from "./access";
export type { ServiceContext } from "./context";
export type { ImageMessage, Job } from "./jobMessages";
export { CATALOGUE_REVISION, readRevisions, USERS_REVISION, userRevision } from "./revisions";
