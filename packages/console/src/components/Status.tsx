import { useLayoutEffect, useRef } from "react";
import { errorText } from "../error-text";
import { type MessageKey, useI18n } from "../i18n";
import { Link } from "../router";

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
  const { t } = useI18n();
  if (!error) return null;
  return (
    <div className="error-note" role="alert">
      {errorText(error, t)}
    </div>
  );
}

export function Modal({ title, onClose, children }: { title: string; onClose: () => void; children: React.ReactNode }) {
  const { t } = useI18n();
  const dialog = useRef<HTMLDialogElement>(null);
  // A modal <dialog> is the browser's own focus trap: the page behind is inert while it is open,
  // and closing it gives focus back to what opened it. Closed before React removes it (a layout
  // effect's cleanup), since a dialog removed while open gives no focus back.
  useLayoutEffect(() => {
    const el = dialog.current;
    el?.showModal();
    return () => el?.close();
  }, []);
  return (
    <dialog
      ref={dialog}
      className="modal"
      aria-label={title}
      onCancel={(e) => {
        // Escape: the owner decides, and unmounts the dialog.
        e.preventDefault();
        onClose();
      }}
    >
      <header>
        <h3>{title}</h3>
        <button type="button" className="icon" onClick={onClose} aria-label={t("close")}>
          ×
        </button>
      </header>
      {children}
    </dialog>
  );
}

/** A page whose subject does not exist (an address, a run, a flow): what is missing, why it may be, and the way back. */
export function NotFound({ title, body, back, to }: { title: string; body: string; back: string; to: string }) {
  return (
    <>
      <h1>{title}</h1>
      <Empty>{body}</Empty>
      <Link to={to} className="back-link">
        ← {back}
      </Link>
    </>
  );
}
