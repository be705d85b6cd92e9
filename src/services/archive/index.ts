export {
  type ArchiveKind,
  archiveImageJobs,
  archiveJobs,
  archiveLedger,
  archiveOldLogs,
  HOT_WINDOW_DAYS,
  readArchive,
} from "./archive";
export { ARCHIVE_KINDS, ArchiveQuery, DeliveriesArchiveQuery } from "./schemas";
