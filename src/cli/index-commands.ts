import type { Command } from 'commander'

export function registerIndexCommands(_program: Command): void {}
