import { useEffect, useRef } from "react";
import { useI18n } from "../i18n";

/** A JSON text area that says where the text stops being JSON. */
export function parseJson(text: string): { value: unknown; error: string | null } {
  if (text.trim() === "") return { value: null, error: null };
  try {
    return { value: JSON.parse(text), error: null };
  } catch (e) {
    return { value: undefined, error: (e as Error).message };
  }
}

export function JsonEditor({
  value,
  onChange,
  label,
  focus = false,
}: {
  value: string;
  onChange: (text: string) => void;
  label: string;
  /** Focused on opening, the caret on the first empty line: a dialog opened to type this JSON. */
  focus?: boolean;
}) {
  const { t } = useI18n();
  const { error } = parseJson(value);
  const area = useRef<HTMLTextAreaElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: once, on opening; the text is the starting one then
  useEffect(() => {
    const el = area.current;
    if (!focus || !el) return;
    el.focus();
    const blank = el.value.search(/\n[ \t]*\n/);
    const at = blank < 0 ? el.value.length : el.value.indexOf("\n", blank + 1);
    el.setSelectionRange(at, at);
  }, []);
  return (
    <label className="field">
      <span>{label}</span>
      <textarea
        ref={area}
        className={`code${error ? " invalid" : ""}`}
        spellCheck={false}
        rows={8}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        aria-invalid={error !== null}
        name="payload"
      />
      {error && (
        <small className="invalid-text">
          {t("trigger.invalid")}: {error}
        </small>
      )}
    </label>
  );
}
