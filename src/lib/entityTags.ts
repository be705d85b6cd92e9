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

/** An entity tag as RFC 9110 §8.8.3 writes it, weak or strong, not empty: `"…"` or `W/"…"`. */
const ENTITY_TAG = /^(W\/)?"[\x21\x23-\x7e\x80-\xff]+"$/;

/**
 * The `If-Match` header as a precondition; tags that are weak or not ours never match (strong comparison),
 * 412. A header that is no list of entity tags, or lists more than MAX_IF_MATCH_TAGS, is refused 400:
 * it names no revision that was ever true.
 */
export function preconditionOf(ifMatch: string): Precondition {
  const tags = ifMatch.split(",").map((tag) => tag.trim());
  if (tags.length === 1 && tags[0] === "*") return { any: true };
  const malformed = tags.find((tag) => !ENTITY_TAG.test(tag));
  if (malformed !== undefined)
    throw DomainError.of(
      "validation_failed",
      `If-Match: ${JSON.stringify(malformed.slice(0, 80))} is not an entity tag; send the ETag as it was read ("…"), or *`,
    );
  if (tags.length > MAX_IF_MATCH_TAGS)
    throw DomainError.of(
      "validation_failed",
      `If-Match: at most ${MAX_IF_MATCH_TAGS} entity tags (it lists ${tags.length})`,
    );
  return {
    any: false,
    tags: tags.flatMap((tag) => {
      const parsed = /^"(.+)\.(\d+)"$/.exec(tag);
      return parsed?.[1] && parsed[2] ? [{ key: parsed[1], revision: Number(parsed[2]) }] : [];
    }),
  };
}
