-- The keyword index gains prefix indexes of 3 to 6 characters. A search matches each word as a prefix,
-- and FTS5 answers a prefix query without one by merging the doclists of every term it covers: a word
-- common across the platform cost its whole doclist even in one dealer's search (a million ads: "fiets"*
-- in one dealer's 5,000 ads took about 4 times the CPU it took among 20,000). With the prefix indexes the
-- word is one doclist that the audience's seeks skip through. Prefixes longer than 6 characters match
-- few terms and keep the plain path. Rebuilt from the ads with the audience the triggers of 0015 write.
DROP TABLE `ads_fts`;
--> statement-breakpoint
CREATE VIRTUAL TABLE `ads_fts` USING fts5(title, description, audience, content='', tokenize='unicode61 remove_diacritics 2', prefix='3 4 5 6');
--> statement-breakpoint
INSERT INTO ads_fts(rowid, title, description, audience)
  SELECT a.id, a.title, a.description, s.audience FROM ads a JOIN ad_search_audience s ON s.user_id = a.user_id;
