# envs/cc/cubic.py in the compiled emulator core (setup.py): its classes stay
# Python classes (subclasses of the typed NewReno); compiling the module only
# removes the interpreter's overhead from their methods.
