import type { Command } from 'commander'

export function registerSearchCommand(_program: Command): void {}
