import { hostname, userInfo } from "node:os";

/**
 * Who stored a config version from this machine: `user@host`, with what stored it when that was
 * not a person's command (`root@vm (ax dev)`), so `ax config history` spells one author one way.
 */
export function localConfigAuthor(via?: string): string {
  // An empty USER counts as unset, as an empty variable does for the global flags.
  const who = `${process.env.USER || userInfo().username}@${hostname()}`;
  return via ? `${who} (${via})` : who;
}
