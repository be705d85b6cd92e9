-- Keyword search over ad titles and descriptions (FTS5, kept in step with `ads` by triggers).
CREATE VIRTUAL TABLE `ads_fts` USING fts5(title, description, content='ads', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE TRIGGER `ads_fts_insert` AFTER INSERT ON `ads` BEGIN
  INSERT INTO ads_fts(rowid, title, description) VALUES (new.id, new.title, new.description);
END;
--> statement-breakpoint
CREATE TRIGGER `ads_fts_delete` AFTER DELETE ON `ads` BEGIN
  INSERT INTO ads_fts(ads_fts, rowid, title, description) VALUES ('delete', old.id, old.title, old.description);
END;
--> statement-breakpoint
CREATE TRIGGER `ads_fts_update` AFTER UPDATE OF title, description ON `ads` BEGIN
  INSERT INTO ads_fts(ads_fts, rowid, title, description) VALUES ('delete', old.id, old.title, old.description);
  INSERT INTO ads_fts(rowid, title, description) VALUES (new.id, new.title, new.description);
END;
--> statement-breakpoint
INSERT INTO ads_fts(rowid, title, description) SELECT id, title, description FROM ads;
