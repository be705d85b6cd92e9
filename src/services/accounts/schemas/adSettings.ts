import { z } from "@hono/zod-openapi";
import { id, onePer, rowId, upTo } from "../../../lib/fields";
import { PUBLISH_TARGETS, PublishTargetEnum } from "../../../lib/vocabulary";

const html = () =>
  upTo(16384).openapi({
    description: "Max 16,384 characters; HTML limited to p, b, strong, u, ul, li, br (sanitised)",
  });

export const UserAdSetting = z
  .strictObject({
    portal: PublishTargetEnum,
    header: html(),
    footer: html(),
    allowContactByEmail: z.boolean().optional().openapi({ description: "Default true" }),
  })
  .openapi("UserAdSetting");

export const UserAdSettingsInput = z
  .object({
    userId: id(),
    // Each portal given is replaced; none given (as a user without settings reads) changes nothing.
    settings: onePer(z.array(UserAdSetting).max(PUBLISH_TARGETS.length), "portal"),
  })
  .openapi("UserAdSettingsInput");

/** A user's ad settings as answered. */
export const UserAdSettings = z
  .object({
    userId: rowId(),
    settings: z.array(UserAdSetting.required()),
  })
  .openapi("UserAdSettings");
