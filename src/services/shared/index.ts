export { callerOf } from "./access";
export { type JobContext, jobContext, type ServiceContext } from "./context";
export type { ImageMessage, JobMessage } from "./jobMessages";
export { CATALOGUE_REVISION, readRevisions, USERS_REVISION, userRevision } from "./revisions";
