import { isDeepStrictEqual } from "node:util";
import type { Document, Node, Pair } from "yaml";
import { redactConfigParsed, redactConfigYaml } from "./config-redaction.js";
import { yaml } from "./yaml-lazy.js";

/**
 * The text to store for an edit made on the masked view of a stored version (the console's editor
 * shows a version as the API does: secrets masked, comments dropped). The edit's changes are made
 * on the stored text itself, value by value, so its comments and layout stay where nothing changed,
 * and a masked value left as it was shown keeps its stored value. Answers `undefined` when the
 * stored text cannot be patched that way (anchors, aliases or merge keys, a key that is not a plain
 * scalar, a text that does not parse): the edit is then stored as written.
 */
export function applyMaskedEdit(stored: string, edited: string): string | undefined {
  const { parseDocument } = yaml();
  const doc = parseDocument(stored);
  const shown = parseDocument(redactConfigYaml(stored));
  const wanted = parseDocument(edited);
  if ([doc, shown, wanted].some((d) => d.errors.length > 0) || usesAnchors(doc)) return undefined;
  const [before, after] = [shown.toJS() as unknown, wanted.toJS() as unknown];
  // Written out again, even an untouched document may differ in layout (indentation, spacing).
  if (isDeepStrictEqual(before, after)) return stored;
  // Nothing stored to keep, or everything removed (the stored comments included): the edit as written.
  if (before === null || before === undefined || after === null || after === undefined) return edited;
  try {
    doc.contents = patch(doc, doc.contents as Node | null, before, after) as typeof doc.contents;
  } catch (error) {
    if (error instanceof Unpatchable) return undefined;
    throw error;
  }
  const merged = doc.toString();
  // The patched text must say what the edit says, bar the masked values it kept: anything else is
  // a case this patching does not understand, and the edit as written is what was asked for.
  const same = isDeepStrictEqual(redactConfigParsed(parseDocument(merged).toJS()), redactConfigParsed(after));
  return same ? merged : undefined;
}

class Unpatchable extends Error {}

function usesAnchors(doc: Document): boolean {
  const { isAlias, visit } = yaml();
  let found = false;
  visit(doc, {
    Node(_, node) {
      if (isAlias(node) || (node as { anchor?: string }).anchor) {
        found = true;
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return found;
}

/** `node` (whose masked form is `before`) changed to say `after`; nodes whose value did not change are kept as they are. */
function patch(doc: Document, node: Node | null, before: unknown, after: unknown): Node | null {
  if (isDeepStrictEqual(before, after)) return node;
  const { isMap, isSeq } = yaml();
  if (isMap(node) && isRecord(before) && isRecord(after)) {
    node.items = node.items.filter((pair) => Object.hasOwn(after, keyOf(pair)));
    for (const [key, value] of Object.entries(after)) {
      const pair = node.items.find((p) => keyOf(p) === key);
      if (pair) pair.value = patch(doc, pair.value as Node | null, before[key], value);
      else node.items.push(doc.createPair(key, value) as Pair<unknown, unknown>);
    }
    return node;
  }
  if (isSeq(node) && Array.isArray(before) && Array.isArray(after)) {
    node.items = patchItems(doc, node.items as (Node | null)[], before, after);
    return node;
  }
  return replaced(doc, node, after);
}

/** A node of `value` in place of `node`, with the comments around it (`retries: 4 # why 4`). */
function replaced(doc: Document, node: Node | null, value: unknown): Node {
  const made = doc.createNode(value);
  if (node) Object.assign(made, { commentBefore: node.commentBefore, comment: node.comment, spaceBefore: node.spaceBefore });
  return made;
}

/**
 * A list's items: an item the edit left as it was (wherever it moved) is the stored one; one it
 * changed is patched in place; a new one is made from its value.
 */
function patchItems(doc: Document, items: (Node | null)[], before: unknown[], after: unknown[]): (Node | null)[] {
  const used = new Set<number>();
  const kept = after.map((value) => {
    const at = before.findIndex((old, i) => !used.has(i) && isDeepStrictEqual(old, value));
    if (at !== -1) used.add(at);
    return at;
  });
  return after.map((value, i) => {
    if (kept[i] !== -1) return items[kept[i]!]!;
    if (i < before.length && !used.has(i)) {
      used.add(i);
      return patch(doc, items[i]!, before[i], value);
    }
    return doc.createNode(value);
  });
}

function keyOf(pair: Pair): string {
  const { isScalar } = yaml();
  if (!isScalar(pair.key)) throw new Unpatchable();
  return String(pair.key.value);
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);
