from bot.cli import main

raise SystemExit(main())
