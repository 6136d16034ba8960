"""The Qt cockpit: windows, docks, tabs, forms, presenters and charts (the only package that imports Qt)."""
