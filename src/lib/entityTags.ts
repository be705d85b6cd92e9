/**
 * Entity tags and `If-Match` (RFC 9110 §8.8.3, §13.1.1): a resource's tag names the revision key its data
 * moves with and the key's revision, so a conditional write can check it in the write's own batch.
 */

import { DomainError } from "./errors";

/**
 * An `If-Match` precondition: the entity tags the caller last read (`"<revision key>.<revision>"`, as
 * `entityTag` makes them), or any (`*`: the resource exists, which every write checks anyway).
 */
export type Precondition = { any: true } | { any: false; tags: { key: string; revision: number }[] };

/** The ETag of a resource whose data moves with the revision key: strong, changed by every write under the key. */
export const entityTag = (key: string, revision: number) => `"${key}.${revision}"`;

/** The most entity tags an `If-Match` may list: a resource has one, and a client sends the one it read. */
export const MAX_IF_MATCH_TAGS = 20;

/** An entity tag as RFC 9110 §8.8.3 writes it, weak or strong: `"…"` or `W/"…"`, `""` too; never a `"` inside. */
const ENTITY_TAG = String.raw`(W\/)?"[\x21\x23-\x7e\x80-\xff]*"`;

/**
 * `If-Match` as the document states it: `*`, or a list of 1 to MAX_IF_MATCH_TAGS entity tags (a comma
 * inside a tag's quotes is part of the tag).
 */
export const IF_MATCH = new RegExp(
  String.raw`^(\*|\s*${ENTITY_TAG}\s*(,\s*${ENTITY_TAG}\s*){0,${MAX_IF_MATCH_TAGS - 1}})$`,
);

/**
 * The `If-Match` header as a precondition; tags that are weak or not ours never match (strong comparison),
 * 412. A header that is no list of entity tags, or lists more than MAX_IF_MATCH_TAGS, is refused 400:
 * it names no revision that was ever true.
 */
export function preconditionOf(ifMatch: string): Precondition {
  if (ifMatch.trim() === "*") return { any: true };
  const tags = ifMatch.match(new RegExp(ENTITY_TAG, "g")) ?? [];
  if (tags.length > MAX_IF_MATCH_TAGS)
    throw DomainError.of(
      "validation_failed",
      `If-Match: at most ${MAX_IF_MATCH_TAGS} entity tags (it lists ${tags.length})`,
    );
  if (!IF_MATCH.test(ifMatch))
    throw DomainError.of(
      "validation_failed",
      `If-Match: ${JSON.stringify(ifMatch.slice(0, 80))} is not an entity tag or a list of them; send the ETag as it was read ("…"), or *`,
    );
  return {
    any: false,
    tags: tags.flatMap((tag) => {
      const parsed = /^"(.+)\.(\d+)"$/.exec(tag);
      return parsed?.[1] && parsed[2] ? [{ key: parsed[1], revision: Number(parsed[2]) }] : [];
    }),
  };
}
