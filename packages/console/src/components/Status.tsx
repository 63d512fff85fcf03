import { useEffect } from "react";
import { type MessageKey, useI18n } from "../i18n";

export function StatusBadge({ status }: { status: string }) {
  const { t } = useI18n();
  return (
    <span className={`badge s-${status}`} data-status={status}>
      <span className="dot" />
      {t(`status.${status}` as MessageKey) ?? status}
    </span>
  );
}

export function Empty({ children }: { children: React.ReactNode }) {
  return (
    <div className="empty">
      <svg width="40" height="40" viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="1.5" aria-hidden="true">
        <circle cx="6" cy="12" r="2.5" />
        <circle cx="18" cy="6" r="2.5" />
        <circle cx="18" cy="18" r="2.5" />
        <path d="M8.3 11l7.4-4M8.3 13l7.4 4" />
      </svg>
      <p>{children}</p>
    </div>
  );
}

export function ErrorNote({ error }: { error: Error | undefined }) {
  if (!error) return null;
  return (
    <div className="error-note" role="alert">
      {error.message}
    </div>
  );
}

export function Modal({ title, onClose, children }: { title: string; onClose: () => void; children: React.ReactNode }) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);
  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-label={title}>
        <header>
          <h3>{title}</h3>
          <button type="button" className="icon" onClick={onClose} aria-label="close">
            ×
          </button>
        </header>
        {children}
      </div>
    </div>
  );
}
