import { z } from "@hono/zod-openapi";
import { type SQL, sql } from "drizzle-orm";
import { MARKETPLACES } from "./marketplaces";

export { MARKETPLACES, type Marketplace } from "./marketplaces";

/**
 * The words the API, its tables and its jobs share, spelled once: portals by role, ad types and
 * statuses, and what a publish job does. Everything else imports them from here (`npm run check:vocabulary` refuses new literal
 * lists of these values elsewhere).
 */

/** Where an ad can be published: the marketplaces and the platform's own website. */
export const PUBLISH_TARGETS = [...MARKETPLACES, "website"] as const;
export type PublishTarget = (typeof PUBLISH_TARGETS)[number];

/** Whose catalogue an attribute or feature belongs to: a marketplace's, or the platform's own. */
export const CATALOGUE_PORTALS = [...MARKETPLACES, "portal_own"] as const;
export type CataloguePortal = (typeof CATALOGUE_PORTALS)[number];

/** An ad offers (supply) or asks (demand). */
export const AD_TYPES = ["supply", "demand"] as const;
export type AdType = (typeof AD_TYPES)[number];

/** An ad's life: a concept, active (publishable) or archived. */
export const AD_STATUSES = ["concept", "active", "archive"] as const;
export type AdStatus = (typeof AD_STATUSES)[number];

/**
 * What a publish job does: stored as its `action`, named by the API as its `kind` (a `publish` job
 * places a new listing: a placement).
 */
export const JOB_KINDS = {
  publish: "placement",
  update: "update",
  unpublish: "unpublish",
  feature: "feature",
} as const;
export type JobAction = keyof typeof JOB_KINDS;
export type JobKind = (typeof JOB_KINDS)[JobAction];
export const JOB_ACTIONS = Object.keys(JOB_KINDS) as [JobAction, ...JobAction[]];
/** The action of a kind, for a filter by kind. */
export const actionOfKind = (kind: JobKind): JobAction =>
  JOB_ACTIONS.find((action) => JOB_KINDS[action] === kind) ?? "publish";
/** SQL giving the kind of the stored action `action`, built from JOB_KINDS. */
export const jobKindSql = (action: SQL | SQL.Aliased | { getSQL(): SQL }): SQL =>
  sql`CASE ${action} ${sql.join(
    JOB_ACTIONS.map((a) => sql`WHEN ${a} THEN ${JOB_KINDS[a]}`),
    sql` `,
  )} END`;

export const MarketplaceEnum = z.enum(MARKETPLACES);
export const PublishTargetEnum = z.enum(PUBLISH_TARGETS);
export const CataloguePortalEnum = z.enum(CATALOGUE_PORTALS);
export const AdTypeEnum = z.enum(AD_TYPES);
export const AdStatusEnum = z.enum(AD_STATUSES);
export const JOB_KIND_NAMES = Object.values(JOB_KINDS) as [JobKind, ...JobKind[]];
export const JobKindEnum = z.enum(JOB_KIND_NAMES);
