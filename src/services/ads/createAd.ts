// POST /ads/: a new ad, with its attributes, settings and details copy, in one D1 batch.
import { type SQL, sql } from "drizzle-orm";
import { namedBatch } from "../../db/client";
import { groupOfUser, newestId, nextId } from "../../db/ids";
import { adSettings, ads } from "../../db/schema";
import { DomainError, detail, type ErrorDetail } from "../../lib/errors";
import { loadCatalogue } from "../catalogue/catalogue";
import { isPartner, requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { bumpRevisions } from "../shared/revisions";
import { adWriteRevisions } from "./access";
import { checkOwnership, newAdContent, newAdDefaultsQuery } from "./adChecks";
import { detailsCopy, insertAttributes, priceColumns, settingRows, syncedAs } from "./adRows";
import type { CreateAdInput } from "./schemas";

/**
 * POST /ads/: the new ad's id. A stock sync passes the item's `syncHash`, stored with the ad in its
 * insert, so that the next sync finds the item unchanged.
 */
export async function createAd(ctx: ServiceContext, input: CreateAdInput & { syncHash?: string }): Promise<number> {
  const { db, caller } = ctx;
  const user = await requireUser(db, caller, input.userId);
  const problems: ErrorDetail[] = [];
  if (isPartner(caller) && input.externalAdId === undefined)
    problems.push(detail("validation_failed", "externalAdId: is required for partner clients"));
  const [catalogue, ownership, defaults] = await Promise.all([
    loadCatalogue(db),
    checkOwnership(db, input.userId, input),
    newAdDefaultsQuery(db, input.userId).get(),
  ]);
  const content = await newAdContent(catalogue, { user, defaults }, input);
  const { settings, description } = content;
  problems.push(...ownership, ...content.problems);
  if (problems.length > 0) throw new DomainError(problems);

  // One batch, one transaction: the ad and everything below it are stored together or not at all.
  // The rows below the ad take its id as the newest of its group's block inside that transaction.
  const group = groupOfUser(input.userId);
  const newAdId = newestId(ads, group);
  const { created } = await namedBatch(db, {
    created: db
      .insert(ads)
      .values({
        id: nextId(ads, group),
        userId: input.userId,
        contactId: input.contactId ?? null,
        folderId: input.folderId ?? null,
        status: input.status ?? "active",
        externalAdId: input.externalAdId ?? null,
        type: input.type ?? defaults?.type ?? "supply",
        title: input.title,
        imagetext: input.imagetext ?? null,
        description,
        categoryId: input.categoryId,
        url: input.url ?? null,
        ...priceColumns(input.price),
        licensePlate: input.misc?.licensePlate ?? null,
        provider: input.provider ?? null,
        createdAt: creationTime(group),
        ...syncedAs(input.syncHash),
      })
      .returning({ id: ads.id }),
    attributes: insertAttributes(
      db,
      { id: newAdId, userId: input.userId, categoryId: input.categoryId },
      content.attributeRows,
    ),
    settings: settings.length ? [db.insert(adSettings).values(settingRows(newAdId, settings))] : [],
    details: detailsCopy(db, newAdId),
    revisions: bumpRevisions(db, adWriteRevisions(input.userId), ctx.precondition),
  });
  const [ad] = created;
  if (!ad) throw new Error("the ad's insert returned no row");
  return ad.id;
}

/**
 * An ad's creation time: now, or its client group's newest ad's if the clock reads earlier. Creation order
 * is then id order within a group, which holds every list a client sees (searches page by id for
 * `created`), and the dates it sees in that order never run backwards.
 */
const creationTime = (group: SQL) =>
  sql<string>`max(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), coalesce((SELECT created_at FROM ads WHERE id = ${newestId(ads, group)}), ''))`;
