-- Consent that returns the user to the client: the origins a client registered (PATCH /client/), and per
-- authorization in progress the URL the callback sends the user to once the API has exchanged the code.
ALTER TABLE `api_clients` ADD `return_origins` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `portal_connections` ADD `oauth_return_url` text;