// The rows an ad's write stores beside it: prices, settings, attributes, its details copy, its sync columns.
import { and, eq, gte, or, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { rowsAsJson } from "../../db/nestedRows";
import { rowChunks } from "../../db/rowChunks";
import { adAttributes, adDetails, adSettings } from "../../db/schema";
import { changedFrom } from "../../db/upserts";
import { nowIso } from "../../lib/time";
import type { Marketplace } from "../../lib/vocabulary";
import type { AttributeRowInput } from "./attributes";
import type { CreateAdInput } from "./schemas";

export const priceColumns = (price: CreateAdInput["price"]) => ({
  priceModel: price.model,
  price: price.price ?? null,
  minimumBid: price.minimumBid ?? null,
  shippingCosts: price.shippingCosts ?? null,
  retail: price.retail ?? null,
});

export function settingRows(adId: SQLValue, settings: NonNullable<CreateAdInput["settings"]>) {
  return settings.map((s) => ({
    adId,
    portal: s.portal,
    showcontact: s.showcontact ?? true,
    autoreplace: s.autoreplace ?? false,
    video: s.video ?? null,
  }));
}
export type SQLValue = number | ReturnType<typeof sql>;

/**
 * The sync columns of an ad a stock sync writes: its item's hash, and the `updatedAt` the write leaves
 * (the same instant), so that a later write by any other call shows as a changed `updatedAt`.
 */
export function syncedAs(syncHash: string | undefined) {
  if (syncHash === undefined) return {};
  const now = nowIso();
  return { syncHash, syncedAt: now, updatedAt: now };
}

/**
 * Rewrites the ad's details copy (`ad_details`) from its attribute and setting rows, once per command and
 * after the command's writes to them in the same batch: one row written, where triggers rewrote it once
 * per attribute row written.
 */
export function detailsCopy(db: Db, adId: SQLValue): BatchItem<"sqlite"> {
  const attributeRows = rowsAsJson(adAttributes, eq(adAttributes.adId, adId), [adAttributes.portal, adAttributes.seq]);
  const settingRows = rowsAsJson(adSettings, eq(adSettings.adId, adId), [adSettings.portal]);
  return db
    .insert(adDetails)
    .values({ adId: typeof adId === "number" ? adId : sql`${adId}`, attributeRows, settingRows })
    .onConflictDoUpdate({
      target: adDetails.adId,
      set: { attributeRows: sql`excluded.attribute_rows`, settingRows: sql`excluded.setting_rows` },
      setWhere: changedFrom(adDetails.attributeRows, adDetails.settingRows),
    });
}

/** The ad's attribute rows, in statements that stay under D1's limit of bound parameters. */
export function insertAttributes(
  db: Db,
  ad: { id: SQLValue; userId: number; categoryId: number | null },
  rows: AttributeRowInput[],
) {
  const owner = { adId: ad.id, userId: ad.userId, categoryId: ad.categoryId };
  return rowChunks(
    adAttributes,
    rows.map((row) => ({ ...row, ...owner })),
  ).map((chunk) => db.insert(adAttributes).values(chunk));
}

/**
 * PUT's attribute sets: each portal sent gets exactly the rows sent. A row is keyed by its position
 * (`seq`), so the rows past the new count go, and each row sent is written only where it differs from
 * the row at its position: an attribute sent again unchanged writes nothing, a changed value updates its
 * row in place.
 */
export function replaceAttributes(
  db: Db,
  ad: { id: number; userId: number; categoryId: number | null },
  portals: Marketplace[],
  rows: AttributeRowInput[],
): BatchItem<"sqlite">[] {
  if (portals.length === 0) return [];
  const count = (portal: Marketplace) => rows.filter((row) => row.portal === portal).length;
  const pastTheRowsSent = or(
    ...portals.map((portal) => and(sql`${adAttributes.portal} = ${portal}`, gte(adAttributes.seq, count(portal)))),
  );
  return [
    db.delete(adAttributes).where(and(eq(adAttributes.adId, ad.id), pastTheRowsSent)),
    ...insertAttributes(db, ad, rows).map((insert) =>
      insert.onConflictDoUpdate({
        target: [adAttributes.adId, adAttributes.portal, adAttributes.seq],
        set: {
          locale: sql`excluded.locale`,
          key: sql`excluded.key`,
          value: sql`excluded.value`,
          valueNumber: sql`excluded.value_number`,
        },
        setWhere: changedFrom(adAttributes.locale, adAttributes.key, adAttributes.value, adAttributes.valueNumber),
      }),
    ),
  ];
}

export function upsertSettings(
  db: Db,
  adId: number,
  settings: NonNullable<CreateAdInput["settings"]>,
): BatchItem<"sqlite">[] {
  return settingRows(adId, settings).map((row) =>
    db
      .insert(adSettings)
      .values(row)
      .onConflictDoUpdate({
        target: [adSettings.adId, adSettings.portal],
        set: { showcontact: row.showcontact, autoreplace: row.autoreplace, video: row.video },
        setWhere: changedFrom(adSettings.showcontact, adSettings.autoreplace, adSettings.video),
      }),
  );
}
