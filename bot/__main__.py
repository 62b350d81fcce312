from bot.terminal.cli import main

raise SystemExit(main())
