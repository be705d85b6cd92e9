-- Issue "Half the rows written". Rows written are D1's expensive side; an index entry written counts as
-- a row, a removed one does not. This migration writes fewer of them per change:
-- 1. The list counters become tallies: one row per (user, status, type, folder, category) and one per
--    (client, status, type, category), in tables without rowid (no second copy of the key). A change moves
--    one row down and one up, where the facet triggers of 0018 rewrote every facet in two tables.
-- 2. The details copy of 0020 (`ad_details`) is written once per command by the ad commands
--    (`detailsCopy`), where its triggers rewrote it once per attribute or setting row written.
-- 3. Indexes no query plan reads go (`events_age`, `webhook_deliveries_age`: the purge walks ids), and the
--    job indexes hold only open jobs or leave out the status, which changes twice in every job's life.
-- 4. The keyword index is rewritten only when the title, description or owner really changes.
DROP TRIGGER `ad_counts_insert`;
--> statement-breakpoint
DROP TRIGGER `ad_counts_delete`;
--> statement-breakpoint
DROP TRIGGER `ad_counts_update`;
--> statement-breakpoint
DROP TRIGGER `client_ad_counts_user_moves`;
--> statement-breakpoint
DROP TABLE `ad_counts`;
--> statement-breakpoint
DROP TABLE `client_ad_counts`;
--> statement-breakpoint
DROP TRIGGER `ad_details_ad_insert`;
--> statement-breakpoint
DROP TRIGGER `ad_details_attribute_insert`;
--> statement-breakpoint
DROP TRIGGER `ad_details_attribute_update`;
--> statement-breakpoint
DROP TRIGGER `ad_details_attribute_delete`;
--> statement-breakpoint
DROP TRIGGER `ad_details_setting_insert`;
--> statement-breakpoint
DROP TRIGGER `ad_details_setting_update`;
--> statement-breakpoint
DROP TRIGGER `ad_details_setting_delete`;
--> statement-breakpoint
CREATE TABLE `ad_tallies` (
	`user_id` integer NOT NULL,
	`status` text NOT NULL,
	`type` text NOT NULL,
	`folder_id` integer NOT NULL,
	`category_id` integer NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`user_id`, `status`, `type`, `folder_id`, `category_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `client_ad_tallies` (
	`client_id` integer NOT NULL,
	`status` text NOT NULL,
	`type` text NOT NULL,
	`category_id` integer NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`client_id`, `status`, `type`, `category_id`)
) WITHOUT ROWID;
--> statement-breakpoint
-- Existing ads are tallied in twenty chunks of users (each reads about a twentieth of the ads through
-- `ads_user_idx`), so no statement of a database of a million ads comes near D1's 30 s limit.
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 0) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 1) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 2) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 3) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 4) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 5) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 6) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 7) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 8) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 9) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 10) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 11) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 12) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 13) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 14) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 15) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 16) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 17) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 18) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `ad_tallies` (user_id, status, type, folder_id, category_id, n)
  SELECT user_id, status, type, coalesce(folder_id, 0), coalesce(category_id, 0), count(*) FROM ads
  WHERE user_id IN (SELECT id FROM users WHERE id % 20 = 19) GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO `client_ad_tallies` (client_id, status, type, category_id, n)
  SELECT coalesce(u.client_id, 0), t.status, t.type, t.category_id, sum(t.n)
  FROM ad_tallies t JOIN users u ON u.id = t.user_id WHERE u.deleted_at IS NULL GROUP BY 1, 2, 3, 4;
--> statement-breakpoint
-- Rows that reach 0 stay: the next ad of that kind moves them up again for one row written.
CREATE TRIGGER `ad_tallies_insert` AFTER INSERT ON `ads` BEGIN
  INSERT INTO ad_tallies (user_id, status, type, folder_id, category_id, n)
    VALUES (new.user_id, new.status, new.type, coalesce(new.folder_id, 0), coalesce(new.category_id, 0), 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
  INSERT INTO client_ad_tallies (client_id, status, type, category_id, n)
    SELECT coalesce(client_id, 0), new.status, new.type, coalesce(new.category_id, 0), 1
    FROM users WHERE id = new.user_id AND deleted_at IS NULL
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `ad_tallies_delete` AFTER DELETE ON `ads` BEGIN
  UPDATE ad_tallies SET n = n - 1
    WHERE user_id = old.user_id AND status = old.status AND type = old.type
      AND folder_id = coalesce(old.folder_id, 0) AND category_id = coalesce(old.category_id, 0);
  UPDATE client_ad_tallies SET n = n - 1
    WHERE client_id = (SELECT coalesce(client_id, 0) FROM users WHERE id = old.user_id AND deleted_at IS NULL)
      AND status = old.status AND type = old.type AND category_id = coalesce(old.category_id, 0);
END;
--> statement-breakpoint
-- A folder's deletion (which sets its ads' folder to NULL) moves them here too.
CREATE TRIGGER `ad_tallies_update` AFTER UPDATE OF user_id, status, type, folder_id, category_id ON `ads`
  WHEN old.user_id IS NOT new.user_id OR old.status IS NOT new.status OR old.type IS NOT new.type
    OR old.folder_id IS NOT new.folder_id OR old.category_id IS NOT new.category_id BEGIN
  UPDATE ad_tallies SET n = n - 1
    WHERE user_id = old.user_id AND status = old.status AND type = old.type
      AND folder_id = coalesce(old.folder_id, 0) AND category_id = coalesce(old.category_id, 0);
  INSERT INTO ad_tallies (user_id, status, type, folder_id, category_id, n)
    VALUES (new.user_id, new.status, new.type, coalesce(new.folder_id, 0), coalesce(new.category_id, 0), 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
-- The client's rows leave out the folder: moving an ad between folders writes none of them.
CREATE TRIGGER `client_ad_tallies_update` AFTER UPDATE OF user_id, status, type, category_id ON `ads`
  WHEN old.user_id IS NOT new.user_id OR old.status IS NOT new.status OR old.type IS NOT new.type
    OR old.category_id IS NOT new.category_id BEGIN
  UPDATE client_ad_tallies SET n = n - 1
    WHERE client_id = (SELECT coalesce(client_id, 0) FROM users WHERE id = old.user_id AND deleted_at IS NULL)
      AND status = old.status AND type = old.type AND category_id = coalesce(old.category_id, 0);
  INSERT INTO client_ad_tallies (client_id, status, type, category_id, n)
    SELECT coalesce(client_id, 0), new.status, new.type, coalesce(new.category_id, 0), 1
    FROM users WHERE id = new.user_id AND deleted_at IS NULL
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
-- A user who moves to another client or is deleted takes their tallies from the client they leave (unless
-- they were deleted) to the one they join (unless they are deleted now).
CREATE TRIGGER `client_ad_tallies_user_moves` AFTER UPDATE OF client_id, deleted_at ON `users`
  WHEN old.client_id IS NOT new.client_id OR old.deleted_at IS NOT new.deleted_at BEGIN
  UPDATE client_ad_tallies
    SET n = n - (SELECT sum(t.n) FROM ad_tallies t WHERE t.user_id = old.id AND t.status = client_ad_tallies.status
      AND t.type = client_ad_tallies.type AND t.category_id = client_ad_tallies.category_id)
    WHERE old.deleted_at IS NULL AND client_id = coalesce(old.client_id, 0)
      AND (status, type, category_id) IN (SELECT status, type, category_id FROM ad_tallies WHERE user_id = old.id AND n > 0);
  INSERT INTO client_ad_tallies (client_id, status, type, category_id, n)
    SELECT coalesce(new.client_id, 0), status, type, category_id, sum(n) FROM ad_tallies
    WHERE user_id = new.id AND new.deleted_at IS NULL AND n > 0 GROUP BY status, type, category_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
--> statement-breakpoint
DROP TRIGGER `ads_fts_update`;
--> statement-breakpoint
CREATE TRIGGER `ads_fts_update` AFTER UPDATE OF title, description, user_id ON `ads`
  WHEN old.title IS NOT new.title OR old.description IS NOT new.description OR old.user_id IS NOT new.user_id BEGIN
  INSERT INTO ads_fts(ads_fts, rowid, title, description, audience)
    SELECT 'delete', old.id, old.title, old.description, audience FROM ad_search_audience WHERE user_id = old.user_id;
  INSERT INTO ads_fts(rowid, title, description, audience)
    SELECT new.id, new.title, new.description, audience FROM ad_search_audience WHERE user_id = new.user_id;
END;
--> statement-breakpoint
DROP INDEX `events_age`;
--> statement-breakpoint
DROP INDEX `webhook_deliveries_age`;
--> statement-breakpoint
DROP INDEX `queue_items_ad`;
--> statement-breakpoint
DROP INDEX `queue_items_waiting`;
--> statement-breakpoint
CREATE INDEX `queue_items_open` ON `queue_items` (`status`,`retry_at`,`updated_at`) WHERE "queue_items"."status" IN ('pending', 'processing');
--> statement-breakpoint
CREATE INDEX `queue_items_ad` ON `queue_items` (`ad_id`,`portal`);
