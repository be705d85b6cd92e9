import { z } from "@hono/zod-openapi";

/**
 * The words the API, its tables and its jobs share, spelled once: portals by role, ad types and
 * statuses. Everything else imports them from here (`npm run check:vocabulary` refuses new literal
 * lists of these values elsewhere).
 */

/** The external classified marketplaces we publish to over their APIs. */
export const MARKETPLACES = ["portal_a", "portal_b"] as const;
export type Marketplace = (typeof MARKETPLACES)[number];

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

export const MarketplaceEnum = z.enum(MARKETPLACES);
export const PublishTargetEnum = z.enum(PUBLISH_TARGETS);
export const CataloguePortalEnum = z.enum(CATALOGUE_PORTALS);
export const AdTypeEnum = z.enum(AD_TYPES);
export const AdStatusEnum = z.enum(AD_STATUSES);
