-- Benchmark data for `npm run bench` (local D1 only; bench/run.mjs fills in __ADS__ and __USERS__): dealers
-- of the dev-internal client with __ADS__ ads between them, interleaved by id in runs of ten (ad i is
-- dealer (i / 10) mod __USERS__'s, so each dealer has every category and status), in the five "Huis en Inrichting" categories, every tenth archived, every seventh in the
-- dealer's folder, each with attributes on two portals and a setting.
WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < __USERS__)
INSERT INTO users (client_id, external_user_id, company_name, last_name, email, phone, county, country)
SELECT (SELECT id FROM api_clients WHERE name = 'dev-internal'), 990000001 + i, 'Bench Meubelen ' || i || ' BV',
       'Bench', 'bench' || i || '@example.nl', '0201234567', 'NH', 'NL'
FROM k;

INSERT INTO user_settings (user_id, status) SELECT id, 'active' FROM users WHERE external_user_id >= 990000001;

INSERT INTO folders (user_id, description) SELECT id, 'Etalage' FROM users WHERE external_user_id >= 990000001;

CREATE TABLE bench_dealers AS
  SELECT u.external_user_id - 990000001 AS dealer, u.id AS user_id, f.id AS folder_id
  FROM users u JOIN folders f ON f.user_id = u.id WHERE u.external_user_id >= 990000001;

WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < __ADS__)
INSERT INTO ads (user_id, folder_id, external_ad_id, title, description, category_id, price_model, price, status, created_at, updated_at)
SELECT d.user_id, CASE WHEN i % 7 = 0 THEN d.folder_id END, i,
       'Bench advertentie ' || i,
       'Omschrijving van advertentie ' || i || CASE i % 4 WHEN 0 THEN ' met fiets' WHEN 1 THEN ' leren bank' WHEN 2 THEN ' eiken tafel' ELSE ' design lamp' END,
       9301 + (i % 5), 'fixed', 100 * i, CASE WHEN i % 10 = 0 THEN 'archive' ELSE 'active' END,
       strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || i || ' seconds'),
       strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || i || ' seconds')
FROM n JOIN bench_dealers d ON d.dealer = (i / 10) % __USERS__;

DROP TABLE bench_dealers;

INSERT INTO ad_attributes (ad_id, portal, locale, key, value, value_number, seq, category_id, user_id)
SELECT a.id, p.portal, 'nl_NL', 'condition', CASE a.id % 3 WHEN 0 THEN 'nieuw' WHEN 1 THEN 'gebruikt' ELSE 'zo goed als nieuw' END, NULL, 0, a.category_id, a.user_id
FROM ads a, (SELECT 'portal_a' AS portal UNION ALL SELECT 'portal_b') p;

INSERT INTO ad_attributes (ad_id, portal, locale, key, value, value_number, seq, category_id, user_id)
SELECT a.id, 'portal_b', 'nl_NL', 'delivery', 'ophalen of verzenden', NULL, 1, a.category_id, a.user_id FROM ads a;

INSERT INTO ad_settings (ad_id, portal, showcontact, autoreplace) SELECT a.id, 'portal_a', 1, a.id % 2 FROM ads a;
