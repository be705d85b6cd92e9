-- Benchmark data for `npm run bench` (local D1 only): one user of the dev-internal client with 20,000
-- ads in the five "Huis en Inrichting" categories, each with attributes on two portals and a setting.
-- Idempotent: does nothing when the bench user already exists.
INSERT INTO users (client_id, external_user_id, company_name, last_name, email, phone, county, country)
SELECT id, 990000001, 'Bench Meubelen BV', 'Bench', 'bench@example.nl', '0201234567', 'NH', 'NL'
FROM api_clients WHERE name = 'dev-internal'
  AND NOT EXISTS (SELECT 1 FROM users WHERE external_user_id = 990000001);

INSERT INTO user_settings (user_id, status)
SELECT id, 'active' FROM users WHERE external_user_id = 990000001
  AND NOT EXISTS (SELECT 1 FROM user_settings s JOIN users u ON u.id = s.user_id WHERE u.external_user_id = 990000001);

WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
INSERT INTO ads (user_id, external_ad_id, title, description, category_id, price_model, price, status, created_at, updated_at)
SELECT (SELECT id FROM users WHERE external_user_id = 990000001), i,
       'Bench advertentie ' || i,
       'Omschrijving van advertentie ' || i || CASE i % 4 WHEN 0 THEN ' met fiets' WHEN 1 THEN ' leren bank' WHEN 2 THEN ' eiken tafel' ELSE ' design lamp' END,
       9301 + (i % 5), 'fixed', 100 * i, CASE WHEN i % 10 = 0 THEN 'archive' ELSE 'active' END,
       strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || i || ' minutes'),
       strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || i || ' minutes')
FROM n
WHERE NOT EXISTS (SELECT 1 FROM ads a JOIN users u ON u.id = a.user_id WHERE u.external_user_id = 990000001);

INSERT INTO ad_attributes (ad_id, portal, locale, key, value, value_number, seq, category_id, user_id)
SELECT a.id, p.portal, 'nl_NL', 'condition', CASE a.id % 3 WHEN 0 THEN 'nieuw' WHEN 1 THEN 'gebruikt' ELSE 'zo goed als nieuw' END, NULL, 0, a.category_id, a.user_id
FROM ads a JOIN users u ON u.id = a.user_id, (SELECT 'portal_a' AS portal UNION ALL SELECT 'portal_b') p
WHERE u.external_user_id = 990000001 AND NOT EXISTS (SELECT 1 FROM ad_attributes x WHERE x.ad_id = a.id);

INSERT INTO ad_attributes (ad_id, portal, locale, key, value, value_number, seq, category_id, user_id)
SELECT a.id, 'portal_b', 'nl_NL', 'delivery', 'ophalen of verzenden', NULL, 1, a.category_id, a.user_id
FROM ads a JOIN users u ON u.id = a.user_id
WHERE u.external_user_id = 990000001 AND NOT EXISTS (SELECT 1 FROM ad_attributes x WHERE x.ad_id = a.id AND x.seq = 1);

INSERT OR IGNORE INTO ad_settings (ad_id, portal, showcontact, autoreplace)
SELECT a.id, 'portal_a', 1, a.id % 2 FROM ads a JOIN users u ON u.id = a.user_id WHERE u.external_user_id = 990000001;
