import { describe, expect, it } from "vitest";
import { plainMessage } from "./plain-messages.js";

describe("plainMessage", () => {
  it("says zod's defaults in a person's words", () => {
    expect(plainMessage("Invalid input: expected number, received NaN")).toBe("expected a number, got a value that is not a number");
    expect(plainMessage("Invalid input: expected number, received string")).toBe("expected a number, got a string");
    expect(plainMessage("Invalid input: expected int, received number")).toBe("expected a whole number, got a fraction");
    expect(plainMessage("Too small: expected number to be >0")).toBe("must be greater than 0");
    expect(plainMessage("Too small: expected number to be >=1")).toBe("must be at least 1");
    expect(plainMessage("Too big: expected number to be <=500")).toBe("must be at most 500");
    expect(plainMessage("Too small: expected string to have >=1 characters")).toBe("must have at least 1 character");
    expect(plainMessage("Too big: expected array to have <=16 items")).toBe("must have at most 16 items");
    expect(plainMessage('Invalid option: expected one of "pending"|"running"')).toBe('must be one of "pending", "running"');
    expect(plainMessage("Invalid input: expected string, received undefined")).toBe("missing (a string)");
    expect(plainMessage('Unrecognized key: "slot"')).toBe('unknown key "slot"; remove it or check its spelling');
  });

  it("leaves ax's own messages alone", () => {
    expect(plainMessage("must be a whole number from 1 to 500")).toBe("must be a whole number from 1 to 500");
    expect(plainMessage("Invalid input")).toBe("Invalid input");
  });
});
