import { useEffect, useState, type MouseEvent, type ReactNode } from "react";

/** The console's pages live under real paths (`/runs/<id>`): the server answers index.html for them. */
export function navigate(to: string): void {
  window.history.pushState(null, "", to);
  window.dispatchEvent(new PopStateEvent("popstate"));
  // A new address is a new page, read from its top (the next page of runs, a run opened from far down a list).
  window.scrollTo(0, 0);
}

/** The same page at another address (a query that says what is open): no history entry, so Back leaves the page. */
export function replace(to: string): void {
  window.history.replaceState(null, "", to);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

export function useLocation(): URL {
  const [href, setHref] = useState(window.location.href);
  useEffect(() => {
    const update = () => setHref(window.location.href);
    window.addEventListener("popstate", update);
    return () => window.removeEventListener("popstate", update);
  }, []);
  return new URL(href);
}

export function Link({
  to,
  children,
  className,
  title,
  current,
}: {
  to: string;
  children: ReactNode;
  className?: string;
  title?: string;
  /** The page shown now (`aria-current="page"`): a tab of a section. */
  current?: boolean;
}) {
  const click = (e: MouseEvent) => {
    if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    navigate(to);
  };
  return (
    <a href={to} onClick={click} className={className} title={title} aria-current={current ? "page" : undefined}>
      {children}
    </a>
  );
}
