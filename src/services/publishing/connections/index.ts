// A user's connection to a marketplace: the row and its view (connection.ts), the consent that makes it
// (consent.ts), the tokens its jobs call with and their renewal (tokens.ts), taking it down (disconnect.ts)
// and sealing its tokens under the current key (reseal.ts).
export { type ConnectionRow, connectionQuery, getConnection } from "./connection";
export { completeConnection, finishConsentAtCallback, startConnection } from "./consent";
export { closeDeletedUsersConnections, disconnect, revokeAllConnections } from "./disconnect";
export { reencryptTokens, tokensToReseal } from "./reseal";
export { withAccessToken } from "./tokens";
