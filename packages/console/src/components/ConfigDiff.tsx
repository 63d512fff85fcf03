function diffClass(line: string): string {
  if (/^(\+\+\+|---|===)/.test(line)) return "muted";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  return line.startsWith("@@") ? "hunk" : "";
}

/** A unified diff of two config texts, its added and removed lines coloured. */
export function ConfigDiff({ diff }: { diff: string }) {
  return (
    <pre className="code diff">
      {diff.split("\n").map((line, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: diff lines have no identity besides their place
        <span key={i} className={diffClass(line)}>
          {line}
          {"\n"}
        </span>
      ))}
    </pre>
  );
}
