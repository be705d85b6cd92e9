export { callerOf } from "./access";
export { type JobContext, jobContext, type ServiceContext } from "./context";
export type { ImageMessage, JobMessage } from "./jobMessages";
export { clientLanesOf } from "./laneShare";
export {
  CATALOGUE_REVISION,
  clientRevision,
  preconditionFailure,
  readEntityTag,
  readRevision,
  readRevisions,
  USER_LIST_REVISIONS,
  userRevision,
  webhookRevision,
} from "./revisions";
