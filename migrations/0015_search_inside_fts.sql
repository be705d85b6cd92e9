-- Ads are ordered by creation as by id (ids are handed out in creation order): the created_at index
-- is no longer read.
DROP INDEX `ads_created_idx`;
--> statement-breakpoint
-- The keyword index also holds who may see each ad, so a keyword search is counted and paged inside it:
-- only the ads of users who are not deleted are indexed, with an `audience` of tokens `c<clientId>` (the
-- user's client) and `u<userId>`. Contentless, because the audience is not a column of `ads`; the
-- triggers below keep it in step with ads and users, and a row is removed with the values it was indexed
-- with (`ad_search_audience` gives them while the user is unchanged).
DROP TRIGGER `ads_fts_insert`;
--> statement-breakpoint
DROP TRIGGER `ads_fts_delete`;
--> statement-breakpoint
DROP TRIGGER `ads_fts_update`;
--> statement-breakpoint
DROP TABLE `ads_fts`;
--> statement-breakpoint
CREATE VIRTUAL TABLE `ads_fts` USING fts5(title, description, audience, content='', tokenize='unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE VIEW `ad_search_audience` AS
  SELECT id AS user_id, coalesce('c' || client_id || ' ', '') || 'u' || id AS audience FROM users WHERE deleted_at IS NULL;
--> statement-breakpoint
CREATE TRIGGER `ads_fts_insert` AFTER INSERT ON `ads` BEGIN
  INSERT INTO ads_fts(rowid, title, description, audience)
    SELECT new.id, new.title, new.description, audience FROM ad_search_audience WHERE user_id = new.user_id;
END;
--> statement-breakpoint
CREATE TRIGGER `ads_fts_delete` AFTER DELETE ON `ads` BEGIN
  INSERT INTO ads_fts(ads_fts, rowid, title, description, audience)
    SELECT 'delete', old.id, old.title, old.description, audience FROM ad_search_audience WHERE user_id = old.user_id;
END;
--> statement-breakpoint
CREATE TRIGGER `ads_fts_update` AFTER UPDATE OF title, description, user_id ON `ads` BEGIN
  INSERT INTO ads_fts(ads_fts, rowid, title, description, audience)
    SELECT 'delete', old.id, old.title, old.description, audience FROM ad_search_audience WHERE user_id = old.user_id;
  INSERT INTO ads_fts(rowid, title, description, audience)
    SELECT new.id, new.title, new.description, audience FROM ad_search_audience WHERE user_id = new.user_id;
END;
--> statement-breakpoint
-- A user who moves to another client or is deleted: their ads leave the index as they were (before the
-- change) and come back with the new audience (after it, if the user is not deleted).
CREATE TRIGGER `ads_fts_user_leaves` BEFORE UPDATE OF client_id, deleted_at ON `users`
  WHEN old.client_id IS NOT new.client_id OR old.deleted_at IS NOT new.deleted_at BEGIN
  INSERT INTO ads_fts(ads_fts, rowid, title, description, audience)
    SELECT 'delete', a.id, a.title, a.description, s.audience
    FROM ads a JOIN ad_search_audience s ON s.user_id = a.user_id WHERE a.user_id = old.id;
END;
--> statement-breakpoint
CREATE TRIGGER `ads_fts_user_returns` AFTER UPDATE OF client_id, deleted_at ON `users`
  WHEN old.client_id IS NOT new.client_id OR old.deleted_at IS NOT new.deleted_at BEGIN
  INSERT INTO ads_fts(rowid, title, description, audience)
    SELECT a.id, a.title, a.description, s.audience
    FROM ads a JOIN ad_search_audience s ON s.user_id = a.user_id WHERE a.user_id = new.id;
END;
--> statement-breakpoint
INSERT INTO ads_fts(rowid, title, description, audience)
  SELECT a.id, a.title, a.description, s.audience FROM ads a JOIN ad_search_audience s ON s.user_id = a.user_id;
