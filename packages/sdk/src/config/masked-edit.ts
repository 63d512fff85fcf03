import { isDeepStrictEqual } from "node:util";
import type { Document, Node, Pair } from "yaml";
import { redactConfigParsed, redactConfigYaml } from "./config-redaction.js";
import { yaml } from "./yaml-lazy.js";

/**
 * The text to store for an edit made on the masked view of a stored version (the console's editor
 * shows a version as the API does: secrets masked, comments dropped). The edit's changes are made
 * on the stored text itself, value by value, so its comments and layout stay where nothing changed,
 * and a masked value left as it was shown keeps its stored value. Comments written in the edit are
 * added where they were written, after any stored comment at the same place. Answers `undefined`
 * when the stored text cannot be patched that way (anchors, aliases or merge keys, a key that is not
 * a plain scalar, a text that does not parse): the edit is then stored as written.
 */
export function applyMaskedEdit(stored: string, edited: string): string | undefined {
  const { parseDocument } = yaml();
  const doc = parseDocument(stored);
  const shown = parseDocument(redactConfigYaml(stored));
  const wanted = parseDocument(edited);
  if ([doc, shown, wanted].some((d) => d.errors.length > 0) || usesAnchors(doc)) return undefined;
  const [before, after] = [shown.toJS() as unknown, wanted.toJS() as unknown];
  const sameValues = isDeepStrictEqual(before, after);
  // Written out again, even an untouched document may differ in layout (indentation, spacing).
  if (sameValues && !hasComments(wanted)) return stored;
  // Nothing stored to keep, or everything removed (the stored comments included): the edit as written.
  if (before === null || before === undefined || after === null || after === undefined) return edited;
  try {
    // An edit's node that refers to an anchor cannot be taken apart from it: its value is made anew.
    const written = usesAnchors(wanted) ? null : (wanted.contents as Node | null);
    doc.contents = patch(doc, doc.contents as Node | null, written, before, after) as typeof doc.contents;
    carryComments(doc.contents as Node | null, wanted.contents as Node | null);
  } catch (error) {
    if (error instanceof Unpatchable) return undefined;
    throw error;
  }
  doc.commentBefore = joined(doc.commentBefore, wanted.commentBefore) ?? null;
  doc.comment = joined(doc.comment, wanted.comment) ?? null;
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

/**
 * `node` (whose masked form is `before`) changed to say `after`, as `written` (the edit's node at
 * the same place) says it; nodes whose value did not change are kept as they are, and new ones are
 * taken as the edit wrote them.
 */
function patch(doc: Document, node: Node | null, written: Node | null, before: unknown, after: unknown): Node | null {
  if (isDeepStrictEqual(before, after)) return node;
  const { isMap, isSeq } = yaml();
  if (isMap(node) && isRecord(before) && isRecord(after)) {
    node.items = node.items.filter((pair) => Object.hasOwn(after, keyOf(pair)));
    const writtenPairs = isMap(written) ? written.items : [];
    let previous: string | undefined;
    for (const [key, value] of Object.entries(after)) {
      const pair = node.items.find((p) => keyOf(p) === key);
      const writtenPair = writtenPairs.find((p) => keyOf(p) === key);
      if (pair) pair.value = patch(doc, pair.value as Node | null, writtenPair?.value as Node | null, before[key], value);
      else {
        // A new key goes where the edit wrote it: after the key written before it.
        const at = previous === undefined ? 0 : node.items.findIndex((p) => keyOf(p) === previous) + 1;
        // The map's own comment is the one above its first key, which is no longer first.
        if (at === 0 && node.items[0] && node.commentBefore) {
          addComments(node.items[0].key as Node, { commentBefore: node.commentBefore });
          node.commentBefore = null;
        }
        node.items.splice(at, 0, (writtenPair?.clone() ?? doc.createPair(key, value)) as Pair<unknown, unknown>);
      }
      previous = key;
    }
    return node;
  }
  if (isSeq(node) && Array.isArray(before) && Array.isArray(after)) {
    const first = node.items[0] as Node | null | undefined;
    node.items = patchItems(doc, node.items as (Node | null)[], isSeq(written) ? (written.items as (Node | null)[]) : [], before, after);
    // The list's own comment is the one above its first item: it moves with that item.
    if (first && node.commentBefore && node.items[0] !== first && node.items.includes(first)) {
      addComments(first, { commentBefore: node.commentBefore });
      node.commentBefore = null;
    }
    return node;
  }
  return replaced(doc, node, written, after);
}

/** The edit's node for `value` in place of `node`, with the stored comments around it (`retries: 4 # why 4`). */
function replaced(doc: Document, node: Node | null, written: Node | null, value: unknown): Node {
  const made = (written?.clone() as Node | undefined) ?? doc.createNode(value);
  if (node) Object.assign(made, { commentBefore: node.commentBefore, comment: node.comment, spaceBefore: node.spaceBefore });
  return made;
}

/**
 * A list's items: an item the edit left as it was (wherever it moved) is the stored one; one it
 * changed is patched in place; a new one is taken as the edit wrote it.
 */
function patchItems(doc: Document, items: (Node | null)[], written: (Node | null)[], before: unknown[], after: unknown[]): (Node | null)[] {
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
      return patch(doc, items[i]!, written[i] ?? null, before[i], value);
    }
    return (written[i]?.clone() as Node | undefined) ?? doc.createNode(value);
  });
}

/** Whether the edit has a comment anywhere: it was shown none, so any it has was written in it. */
function hasComments(doc: Document): boolean {
  const { visit } = yaml();
  let found = Boolean(doc.commentBefore || doc.comment);
  visit(doc, {
    Node(_, node) {
      if (!commented(node)) return undefined;
      found = true;
      return visit.BREAK;
    },
  });
  return found;
}

type Commented = { commentBefore?: string | null; comment?: string | null };

const commented = (node: unknown): boolean => Boolean((node as Commented | null)?.commentBefore || (node as Commented | null)?.comment);

/** The edit's comments on `target`, the node at the same place in the patched document, and below it. */
function carryComments(target: Node | null, source: Node | null): void {
  const { isMap, isSeq } = yaml();
  if (!target || !source) return;
  if (isMap(target) && isMap(source)) {
    // A comment above a map's first key is the map's own; it stays above that key, wherever it is.
    const first = source.items[0] ? keyOf(source.items[0]) : undefined;
    const above = target.items.find((p) => keyOf(p) === first);
    if (above && above !== target.items[0]) {
      addComments(above.key as Node, { commentBefore: source.commentBefore });
      addComments(target, { comment: source.comment });
    } else addComments(target, source);
    for (const pair of source.items) {
      const key = keyOf(pair);
      const match = target.items.find((p) => keyOf(p) === key);
      if (!match) continue;
      addComments(match.key as Node, pair.key as Node);
      carryComments(match.value as Node | null, pair.value as Node | null);
    }
    return;
  }
  addComments(target, source);
  if (isSeq(target) && isSeq(source)) {
    // The patched list is in the edit's order, so an item's place is its index in both.
    source.items.forEach((item, i) => {
      carryComments(target.items[i] as Node | null, item as Node | null);
    });
  }
}

function addComments(target: Commented, source: Commented): void {
  target.commentBefore = joined(target.commentBefore, source.commentBefore, "\n");
  // A value's trailing comment is written on its line, so two of them share it.
  target.comment = joined(target.comment, source.comment, ";");
}

/** A stored comment with one written in the edit after it; one already there is not written twice. */
function joined(stored: string | null | undefined, written: string | null | undefined, between = "\n"): string | null | undefined {
  if (!written || stored?.includes(written)) return stored;
  if (!stored) return written;
  return `${stored}${stored.includes("\n") || written.includes("\n") ? "\n" : between}${written}`;
}

function keyOf(pair: Pair): string {
  const { isScalar } = yaml();
  if (!isScalar(pair.key)) throw new Unpatchable();
  return String(pair.key.value);
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);
