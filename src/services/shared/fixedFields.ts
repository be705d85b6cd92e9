import { DomainError, detail } from "../../lib/errors";

/**
 * Fields fixed after creation that a write may still carry (a client sends back what it read): each one
 * given must equal what is stored; a difference returns 400 `not_updatable`, naming the field.
 */
export function requireUnchanged<K extends string>(
  given: Partial<Record<K, unknown>>,
  stored: Record<K, unknown>,
  fields: readonly K[],
): void {
  const changed = fields.filter((field) => given[field] !== undefined && given[field] !== stored[field]);
  if (changed.length > 0)
    throw new DomainError(changed.map((field) => detail("not_updatable", `${field}: cannot be changed`)));
}
