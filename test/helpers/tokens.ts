import { Client, type TokenScope } from "ax-scheduler";
import { migrate, openStore } from "@ax/store";

/**
 * An API token stored before any Runtime starts on `storage` (an API process refuses to start
 * without one): migrates the history first, as the Runtime would.
 */
export async function tokenBeforeStart(
  where: { storage: string; redis: string; prefix: string },
  name: string,
  scope: TokenScope = "read",
): Promise<string> {
  const store = openStore({ url: where.storage });
  try {
    await migrate(store);
  } finally {
    await store.close();
  }
  const client = new Client({ storage: where.storage, redis: where.redis, prefix: where.prefix });
  try {
    return (await client.tokens.create({ name, scope })).token;
  } finally {
    await client.close();
  }
}
