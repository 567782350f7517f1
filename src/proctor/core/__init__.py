"""The bottom layer: errors, task specs, the loaded ``Task``, model request types, images, YAML with
line numbers, and the registry through which dialects and plug-ins contribute to the layers above."""
