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

export function JsonEditor({ value, onChange, label }: { value: string; onChange: (text: string) => void; label: string }) {
  const { t } = useI18n();
  const { error } = parseJson(value);
  return (
    <label className="field">
      <span>{label}</span>
      <textarea
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
