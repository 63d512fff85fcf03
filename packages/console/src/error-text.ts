import { ApiUnreachableError } from "./api";
import type { MessageKey } from "./i18n";

/** What to show for a failed call: the server's own message, or ours in the page's language when no server answered. */
export function errorText(error: unknown, t: (key: MessageKey) => string): string {
  if (error instanceof ApiUnreachableError) return t("api.unreachable");
  return error instanceof Error ? error.message : String(error);
}
