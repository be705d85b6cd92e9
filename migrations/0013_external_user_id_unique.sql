-- externalUserId is the user's id in the client's backend: unique per client. Users that already share
-- one keep it on the oldest; the others lose it (the client can set it again on the right user).
UPDATE `users` SET `external_user_id` = NULL
WHERE `client_id` IS NOT NULL AND `external_user_id` IS NOT NULL AND `deleted_at` IS NULL
  AND `id` NOT IN (
    SELECT min(`id`) FROM `users`
    WHERE `client_id` IS NOT NULL AND `external_user_id` IS NOT NULL AND `deleted_at` IS NULL
    GROUP BY `client_id`, `external_user_id`
  );
--> statement-breakpoint
CREATE UNIQUE INDEX `users_client_external_id` ON `users` (`client_id`,`external_user_id`) WHERE "users"."external_user_id" IS NOT NULL AND "users"."deleted_at" IS NULL;
