import { type adFeatures, type adPublications, PUBLISH_PORTALS } from "../../db/schema";
import { formatDateTime } from "../../lib/time";

type PublicationRow = typeof adPublications.$inferSelect;
export function publishStatus(portal: (typeof PUBLISH_PORTALS)[number], row: PublicationRow | undefined) {
  const status = {
    pending: row?.pending ?? false,
    pendingDate: formatDateTime(row?.pendingDate),
    processing: row?.processing ?? false,
    processingDate: formatDateTime(row?.processingDate),
    error: row?.error ?? false,
    active: row?.active ?? false,
    online: row?.online ?? false,
    startDate: formatDateTime(row?.startDate),
    closeDate: formatDateTime(row?.closeDate),
    remoteAdId: row?.remoteAdId ?? 0,
    errorReason: row?.errorReason ?? null,
    queueItemId: row?.queueItemId ?? null,
  };
  // The website is the platform's own portal: no client or queue result of a marketplace.
  return portal === "website"
    ? status
    : { ...status, clientResult: row?.clientResult ?? false, queueResult: row?.queueResult ?? false };
}

type FeatureRow = typeof adFeatures.$inferSelect;

export const featureStatus = (row: FeatureRow) => ({
  feature: row.feature,
  pending: row.pending,
  pendingDate: formatDateTime(row.pendingDate),
  error: row.error,
  active: row.active,
  startDate: formatDateTime(row.startDate),
});

/** The spec's `portals` list: per portal the publish status and its features (`false` when none; website has none). */
export function portalStatuses(publications: PublicationRow[], features: FeatureRow[]) {
  return PUBLISH_PORTALS.map((portal) => {
    const own = features.filter((f) => f.portal === portal);
    return {
      portal,
      publish: publishStatus(
        portal,
        publications.find((p) => p.portal === portal),
      ),
      features: own.length > 0 ? own.map(featureStatus) : (false as const),
    };
  });
}
