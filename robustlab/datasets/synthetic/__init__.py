"""The built-in synthetic world: scenes, event videos, captions, referring expressions and questions."""
