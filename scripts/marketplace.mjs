// What a marketplace holds for a user, as the marketplace's own operator sees it (local development).
//   npm run marketplace -- <userId> [--portal portal_a] [--origin http://localhost:8787] [--key dev-internal-key]
// The user's connection names its marketplace account (PortalConnection.externalUserId); the simulator's
// control route lists that account's listings, read with the portal's operator credentials (.dev.vars).
import { parseArgs } from "node:util";
import { readDevVars, simulatorOperator } from "./d1.mjs";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    portal: { type: "string", default: "portal_a" },
    origin: { type: "string", default: "http://localhost:8787" },
    key: { type: "string", default: readDevVars().DEV_INTERNAL_KEY },
  },
});
const userId = Number(positionals[0]);
if (!Number.isInteger(userId) || userId < 1) {
  console.error(
    "usage: npm run marketplace -- <userId> [--portal portal_a] [--origin http://localhost:8787] [--key KEY]",
  );
  process.exit(2);
}

const connection = await fetch(`${values.origin}/rest/v1/oauth/${userId}/${values.portal}/`, {
  headers: { Authorization: `Bearer ${values.key}` },
})
  .then((response) => response.json())
  .catch(() => {
    // Nothing answers there: `npm run dev` runs on another port (its banner prints this command with it).
    console.error(
      `nothing answers at ${values.origin}: pass the address npm run dev serves with --origin (its banner prints this command with it), e.g. npm run marketplace -- ${userId} --origin http://localhost:9000`,
    );
    process.exit(1);
  });
if (!connection.result) {
  console.error(connection.errors.join("\n"));
  process.exit(1);
}
const account = connection.data.externalUserId;
if (!connection.data.status) {
  console.error(`user ${userId} is not connected to ${values.portal}: the marketplace holds nothing of theirs`);
  process.exit(1);
}
const held = await fetch(`${values.origin}/simulator/${values.portal}/control/accounts/${account}/listings`, {
  headers: { Authorization: simulatorOperator(values.portal) },
});
if (!held.ok) {
  console.error(`the simulator's operator view answered ${held.status}: ${await held.text()}`);
  process.exit(1);
}
const { listings } = await held.json();
console.log(JSON.stringify({ userId, portal: values.portal, account, listings }, null, 2));
