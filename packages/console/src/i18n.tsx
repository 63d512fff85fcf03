import { createContext, type ReactNode, useContext, useEffect, useState } from "react";
import { setFormatLanguage } from "./format";
import { en, type MessageKey as Key } from "./messages/en";
import { zh } from "./messages/zh";

export type Lang = "en" | "zh";
const dictionaries: Record<Lang, Record<Key, string>> = { en, zh };
const LANG_KEY = "ax.lang";
/** A value the server sends that has a message (a trigger, an outcome), else the value itself. */
export function label(t: (key: Key) => string, prefix: "triggered" | "outcome", value: string): string {
  const key = `${prefix}.${value}`;
  return key in en ? t(key as Key) : value;
}

/** A message with its `{name}` places filled: word order differs between the languages. */
export function fill(text: string, values: Record<string, string | number>): string {
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in values ? String(values[name]) : whole));
}

interface I18n {
  lang: Lang;
  t: (key: Key) => string;
  toggle: () => void;
}

const Context = createContext<I18n>({ lang: "en", t: (k) => en[k], toggle: () => {} });

function initialLang(): Lang {
  const stored = localStorage.getItem(LANG_KEY);
  if (stored === "en" || stored === "zh") return stored;
  return navigator.language.startsWith("zh") ? "zh" : "en";
}

export function I18nProvider({ children }: { children: ReactNode }) {
  const [lang, setLang] = useState<Lang>(initialLang);
  setFormatLanguage(lang);
  // The page's language from the first render, a stored choice included: screen readers and fonts follow it.
  useEffect(() => {
    document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  }, [lang]);
  const toggle = () => {
    const next = lang === "en" ? "zh" : "en";
    localStorage.setItem(LANG_KEY, next);
    setLang(next);
  };
  return <Context.Provider value={{ lang, t: (k) => dictionaries[lang][k], toggle }}>{children}</Context.Provider>;
}

export const useI18n = () => useContext(Context);
export type { Key as MessageKey };
