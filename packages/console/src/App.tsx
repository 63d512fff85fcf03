import { useEffect, useState } from "react";
import { setUnauthorizedHandler, token } from "./api";
import { NotFound } from "./components/Status";
import { shortId } from "./format";
import { fill, I18nProvider, useI18n } from "./i18n";
import { AlertsPage } from "./pages/Alerts";
import { AuditPage } from "./pages/Audit";
import { ConfigPage } from "./pages/Config";
import { FlowPage, FlowsPage } from "./pages/Flows";
import { LoginPage } from "./pages/Login";
import { RunPage } from "./pages/Run";
import { RunsPage } from "./pages/Runs";
import { SchedulesPage } from "./pages/Schedules";
import { TokensPage } from "./pages/Tokens";
import { WorkersPage } from "./pages/Workers";
import { Link, useLocation } from "./router";
import { SessionProvider, useSession } from "./session";

const NAV = [
  { to: "/flows", key: "flows", icon: "M4 6h4v4H4zM16 14h4v4h-4zM8 8h4a2 2 0 0 1 2 2v4a2 2 0 0 0 2 2" },
  { to: "/runs", key: "runs", icon: "M5 4l14 8-14 8z" },
  { to: "/schedules", key: "schedules", icon: "M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18zM12 7v5l3 3" },
  { to: "/workers", key: "workers", short: "workers.short", icon: "M4 5h16v5H4zM4 14h16v5H4zM7 7.5h.01M7 16.5h.01" },
  { to: "/alerts", key: "alerts", icon: "M6 16V11a6 6 0 0 1 12 0v5l2 2H4zM10 20a2 2 0 0 0 4 0" },
  { to: "/config", key: "config", icon: "M12 8a4 4 0 1 0 0 8 4 4 0 0 0 0-8zM12 2v3M12 19v3M2 12h3M19 12h3" },
  { to: "/tokens", key: "access", also: ["audit"], icon: "M4 12a4 4 0 1 0 8 0a4 4 0 1 0-8 0zM12 12h9M18 12v3M15 12v2" },
] as const;

/** Whether the page `section` (the path's first part) belongs to the navigation entry `n`. */
const inSection = (n: (typeof NAV)[number], section: string) =>
  section === n.to.slice(1) || ("also" in n && (n.also as readonly string[]).includes(section));

function Page({ path }: { path: string }) {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "runs" && parts[1]) return <RunPage id={parts[1]} />;
  if (parts[0] === "runs") return <RunsPage />;
  if (parts[0] === "flows" && parts[1]) return <FlowPage name={parts[1]} />;
  if (parts[0] === "config") return <ConfigPage />;
  if (parts[0] === "workers") return <WorkersPage />;
  if (parts[0] === "alerts") return <AlertsPage />;
  if (parts[0] === "audit") return <AuditPage />;
  if (parts[0] === "tokens") return <TokensPage />;
  if (parts[0] === "schedules") return <SchedulesPage />;
  if (parts.length === 0 || parts[0] === "flows") return <FlowsPage />;
  return <PageNotFound />;
}

function PageNotFound() {
  const { t } = useI18n();
  return <NotFound title={t("notFound.title")} body={t("notFound.body")} back={t("notFound.back")} to="/flows" />;
}

/** The browser tab's title: tabs and history entries of several pages told apart. */
function pageTitle(path: string, t: ReturnType<typeof useI18n>["t"]): string {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const page = parts[0] ?? "flows";
  // A section's other pages (the audit log under Access) are named for themselves.
  const section = NAV.find((n) => n.to === `/${page}`) ?? (page === "audit" ? { key: "audit" as const } : undefined);
  const name =
    parts[0] === "runs" && parts[1]
      ? `${t("title.run")} ${shortId(parts[1])}`
      : parts[0] === "flows" && parts[1]
        ? parts[1]
        : section
          ? t(section.key)
          : t("notFound.title");
  return `${name} · ax console`;
}

/** Whose token the console acts with, so a disabled action's reason is no surprise. */
function SignedIn() {
  const { t } = useI18n();
  const session = useSession();
  if (!session?.auth || session.name === null) return null;
  return (
    <span className="signed-in" data-testid="signed-in" title={session.expiresAt ?? undefined}>
      {fill(t("scope.signedIn"), { name: session.name, scope: session.scope })}
    </span>
  );
}

function Shell() {
  const { t, toggle, lang } = useI18n();
  const location = useLocation();
  useEffect(() => {
    document.title = pageTitle(location.pathname, t);
  }, [location.pathname, t]);
  const [loggedOut, setLoggedOut] = useState(false);
  useEffect(() => setUnauthorizedHandler(() => setLoggedOut(true)), []);
  if (loggedOut) return <LoginPage onLogin={() => setLoggedOut(false)} />;
  const section = location.pathname.split("/")[1] || "flows";
  return (
    <SessionProvider>
      <div className="shell">
        <nav className="sidebar">
          <div className="brand">
            <span className="logo">ax</span>
            <span>console</span>
          </div>
          {NAV.map((n) => (
            <Link key={n.to} to={n.to} className={`nav${inSection(n, section) ? " active" : ""}`} title={t(n.key)}>
              <svg width="18" height="18" viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="1.8" aria-hidden="true">
                <path d={n.icon} />
              </svg>
              <span className="nav-label">
                {"short" in n ? (
                  <>
                    <span className="nav-long">{t(n.key)}</span>
                    {/* The phone's one-line bar has no room for the long label. */}
                    <span className="nav-short">{t(n.short)}</span>
                  </>
                ) : (
                  t(n.key)
                )}
              </span>
            </Link>
          ))}
          <div className="sidebar-foot">
            <button type="button" className="link" onClick={toggle} data-testid="language" lang={lang === "en" ? "zh-CN" : "en"}>
              {t("language")}
            </button>
            <SignedIn />
            {token.get() && (
              <button
                type="button"
                className="link"
                onClick={() => {
                  token.clear();
                  setLoggedOut(true);
                }}
              >
                {t("logout")}
              </button>
            )}
          </div>
        </nav>
        <main>
          <Page path={location.pathname} />
        </main>
      </div>
    </SessionProvider>
  );
}

export function App() {
  return (
    <I18nProvider>
      <Shell />
    </I18nProvider>
  );
}
